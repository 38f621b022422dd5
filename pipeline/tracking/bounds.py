"""Bounds on every call to an MLflow server, and one line when it cannot be reached.

MLflow's client retries a failed request 7 times with a backoff factor of 2 and a 120 s timeout per try, so a
promote whose server died part-way retried for more than 10 minutes, and with the server down from the start it
failed after about 4 minutes with a traceback. Here (unless the environment sets them) a request is tried 3
times, 10 s each, 1 s and 2 s apart: a call fails within about 35 s. Before any work, an `http(s)` store is asked
for `/health` (5 s); and whatever MLflow or the network raises inside `tracking_errors` becomes one
`TrackingUnavailableError` naming the URI.
"""

from __future__ import annotations

import contextlib
import os
import urllib.error
import urllib.request
from collections.abc import Iterator

from pipeline.errors import TrackingError

REQUEST_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}
HEALTH_TIMEOUT_S = 5.0


class TrackingUnavailableError(TrackingError, RuntimeError):
    """The MLflow store could not be reached or answered with an error (the message names its URI)."""


def bound_requests() -> None:
    """MLflow's HTTP retries and timeout bounded, where the environment leaves them unset."""
    for name, value in REQUEST_BOUNDS.items():
        os.environ.setdefault(name, value)


def _is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def check_reachable(uri: str) -> None:
    """Raise TrackingUnavailableError at once when an http(s) store does not answer its /health."""
    if not _is_http(uri):
        return
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=HEALTH_TIMEOUT_S) as reply:
            if reply.status == 200:
                return
            reason = f"HTTP {reply.status} from /health"
    except urllib.error.HTTPError as exc:
        reason = f"HTTP {exc.code} from /health"
    except (OSError, ValueError) as exc:
        reason = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
    raise TrackingUnavailableError(f"MLflow at {uri} is not reachable ({reason}); start it or set MLFLOW_TRACKING_URI")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."


@contextlib.contextmanager
def tracking_errors(uri: str) -> Iterator[None]:
    """Turn what MLflow, its HTTP client or its database raise into one TrackingUnavailableError naming `uri`."""
    from mlflow.exceptions import MlflowException

    errors: tuple[type[BaseException], ...] = (MlflowException, ConnectionError, TimeoutError)
    with contextlib.suppress(ImportError):
        import requests

        errors += (requests.exceptions.RequestException,)
    with contextlib.suppress(ImportError):
        import sqlalchemy.exc

        errors += (sqlalchemy.exc.SQLAlchemyError,)
    try:
        yield
    except TrackingUnavailableError:
        raise
    except errors as exc:
        raise TrackingUnavailableError(f"MLflow at {uri}: {_one_line(exc)}") from None
