"""Workspace templates, shipped as package data and rendered by ``create_vivary``.

``base/`` is written for every preset, ``preset/`` once per preset with its names
filled in, ``skills/`` under both ``.claude/skills/`` and ``.agents/skills/``. A file
named ``dot-X`` is written as ``.X`` (a real ``.gitignore`` here would govern this repo).
"""
