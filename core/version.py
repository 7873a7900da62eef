"""Version strings recorded with every result."""

#: Changes whenever simulation semantics change, so that stored results computed under other
#: semantics are never mistaken for current ones.
MODEL_VERSION = "2"
