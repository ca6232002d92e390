"""The repository layer: the only code that opens git (pygit2 or the git binary),
moves refs and writes under ``.git/``; everything else asks it."""
