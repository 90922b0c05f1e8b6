"""How every command reaches a running Dask scheduler: one timeout, one TLS rule, one message.

``speedaudit collect --scheduler`` (jobs run on the cluster's workers) and ``speedaudit audit all --scheduler``
(per-problem partial results on the workers) connect through :func:`connect`, with the certificates of
:func:`tls_security` and the timeout ``--connect-timeout`` (default :data:`CONNECT_TIMEOUT_S`). Shared by the
collect and engine layers, like :mod:`audits.errors`, so that neither keeps a copy of the rule.
"""

from __future__ import annotations

import os
import ssl

from audits.errors import UserError

__all__ = ["CONNECT_TIMEOUT_S", "connect", "tls_security"]

#: Seconds to try reaching a scheduler before giving up (``--connect-timeout``). A scheduler answers within
#: milliseconds once it listens, but distributed keeps retrying a refused or unanswered connection until this
#: runs out, so it is also how long a wrong address takes to be reported. 10 s leaves room for a scheduler
#: that is still starting or a loaded machine (distributed's own default, 30 s, made a typo cost half a minute).
CONNECT_TIMEOUT_S = 10.0

#: The command-line flags of the three TLS files, in the order of :func:`tls_security`'s arguments.
TLS_FLAGS = ("--tls-ca-file", "--tls-cert", "--tls-key")


def tls_security(ca_file: str | None, cert: str | None, key: str | None):
    """The :class:`distributed.security.Security` of the cluster's CA certificate and this client's certificate
    and key (TLS required), or None when none of the three is given.

    Raises :class:`~audits.errors.UserError` naming the flag when only some are given or a file is missing."""
    given = (ca_file, cert, key)
    if not any(given):
        return None
    if not all(given):
        missing = [flag for flag, path in zip(TLS_FLAGS, given) if not path]
        raise UserError(f"{', '.join(TLS_FLAGS)} go together (the cluster's CA and this client's certificate and "
                        f"key): add {' and '.join(missing)}")
    for flag, path in zip(TLS_FLAGS, given):
        if not os.path.isfile(path):
            raise UserError(f"{flag} {path}: no such file")
    # deferred: distributed, the optional Dask engine's library (speedaudit --help stays light)
    from distributed.security import Security

    return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key, require_encryption=True)


def connect(scheduler: str, *, security=None, timeout_s: float = CONNECT_TIMEOUT_S, advice: str,
            error: type[UserError] = UserError):
    """A :class:`distributed.Client` of the running ``scheduler``, or ``error`` (a :class:`UserError`) saying it
    cannot connect within ``timeout_s`` seconds, followed by ``advice`` (what to start or change)."""
    if not timeout_s > 0:  # also NaN
        raise error(f"--connect-timeout {timeout_s}: give a positive number of seconds")
    if str(scheduler).startswith("tls://") and security is None:
        raise error(f"--scheduler {scheduler}: a TLS scheduler needs the cluster's certificates: give "
                    f"{', '.join(TLS_FLAGS)}")
    # deferred: distributed, the optional Dask engine's library (speedaudit --help stays light)
    from distributed import Client

    try:
        return Client(scheduler, timeout=f"{timeout_s}s", security=security)
    except ssl.SSLError as exc:  # the files are read when connecting: a bad certificate is not a slow scheduler
        raise error(f"--scheduler {scheduler}: the TLS files cannot be used ({exc.reason or exc})\n  -> give the "
                    f"cluster's CA certificate and this client's certificate and key, PEM-encoded, with "
                    f"{', '.join(TLS_FLAGS)}") from exc
    except (OSError, TimeoutError) as exc:
        raise error(f"--scheduler {scheduler}: cannot connect within {timeout_s:g} s ({exc})\n  -> {advice}; "
                    f"or give it longer with --connect-timeout SECONDS") from exc
