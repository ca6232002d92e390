"""The heartbeat's scripted workspace, shared: candidates are staged beside its proposals."""

from tests.strato.heartbeat.conftest import ws

__all__ = ["ws"]
