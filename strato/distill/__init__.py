"""``strato distill``: mine agent transcripts for workflows that earned a skill.

Read-only over Claude Code and Codex session files (see :mod:`strato.distill.transcripts`
for the shapes), streamed line by line. A workflow seen three times across at least two
sessions (the third-strike rule) becomes a complete ``SKILL.md`` candidate for both
``.claude/skills/<name>/`` and ``.agents/skills/<name>/``, staged with the heartbeat's
proposals; nothing is installed without ``strato heartbeat apply``.
"""
