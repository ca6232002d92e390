"""Workspace templates, shipped as package data and rendered by ``create_vivary``.

``base/`` is written for every preset; ``preset/`` once, filled with the words of
``presets/<name>.toml``; ``skills/`` under both ``.claude/skills/`` and
``.agents/skills/``. A file named ``dot-X`` is written as ``.X`` (a real ``.gitignore``
here would govern this repository).
"""
