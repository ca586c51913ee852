"""Validation telemetry (PROTOCOL.md section 13): what the server observed of a session,
for a validator that opened it with the server's validation token."""

from .frames import ValidationFrames, validation_handlers
from .record import SessionRecord

__all__ = ["SessionRecord", "ValidationFrames", "validation_handlers"]
