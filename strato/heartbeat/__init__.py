"""The heartbeat: after commits, distil what the work taught into proposals.

It reads what happened since the last heartbeat (one ``git log`` pass), audits the
workspace's hygiene, proposes bug-risk playbook rows, memory lines and skill candidates,
and writes them to private places only (``.git/vivary/heartbeat/`` and the ignored
``heartbeat-reports/``). Nothing durable changes until a person runs ``apply``, which
builds a branch ``heartbeat/<id>`` from trees. See docs/heartbeat.md.
"""
