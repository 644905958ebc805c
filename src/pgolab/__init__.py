"""pgolab: build database servers with LTO, PGO and BOLT, train them, prove the result."""

__version__ = "0.1.0"
