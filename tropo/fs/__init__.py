"""Files, not git: whole-or-nothing writes, writes confined to a root, record files."""
