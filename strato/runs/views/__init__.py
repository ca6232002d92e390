"""How a run looks from outside: the CLI's JSON documents, Stratum's wire shapes and events, attempts."""
