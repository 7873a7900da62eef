"""Contract suites that check plug-ins of tiersweep (policies, platforms, backends) from their tests."""
