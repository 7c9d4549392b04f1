"""Project exceptions: small, specific, and always carrying the offending value."""


class BglError(Exception):
    """Base class so callers can catch every bgl failure in one clause."""


class StoreFormatError(BglError):
    """A graph store on disk is missing, incomplete or inconsistent."""


class IngestError(BglError):
    """An input dataset could not be read (malformed line, bad ids, shape mismatch)."""


class PartitionFormatError(BglError):
    """A partition directory is missing, incomplete or inconsistent."""


class ProtocolError(BglError):
    """A wire message does not follow the bgl protocol."""


class ServerError(BglError):
    """A graph server answered a request with an ERROR reply."""


class ServerUnavailable(BglError):
    """A graph server did not answer within the timeout."""

    def __init__(self, address: str, reason: str = "no reply within timeout"):
        self.address = address
        super().__init__(f"graph server {address} unavailable: {reason}")


class PipelineError(BglError):
    """A pipeline stage died or raised; the message names the stage."""


class LaunchError(BglError):
    """A cluster launch could not start or a launched process failed."""
