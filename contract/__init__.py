"""The plug-in contract suite, shipped as importable pytest test classes (one module per family).

A policy or platform written outside this package gets the whole contract by subclassing
:class:`tiersweep.contract.policies.PolicyContract` or
:class:`tiersweep.contract.platforms.PlatformContract` in a module pytest collects; a sweep
backend gets it from :class:`tiersweep.contract.backends.BackendContract`. The suite lies
outside the simulator's package, so editing it changes no result's code digest.
"""
