"""One recipe per server: how to configure, build, install, initialise, start and stop it."""

from __future__ import annotations

from ..errors import PgolabError
from .mariadb import MariaDBInstallation, MariaDBTarget
from .mysql import MySQLInstallation, MySQLTarget
from .postgresql import PostgreSQLInstallation, PostgreSQLTarget

TARGETS = {"mariadb": MariaDBTarget(), "mysql": MySQLTarget(), "postgresql": PostgreSQLTarget()}
INSTALLATIONS = (MariaDBInstallation, MySQLInstallation, PostgreSQLInstallation)


def target_for(server: str, engines=()):
    """The server's recipe; with engines, one that also builds these storage-engine plugins."""
    try:
        target = TARGETS[server]
    except KeyError:
        raise PgolabError(f"no recipe for server {server!r}", hint=f"supported: {', '.join(TARGETS)}")
    return target.with_engines(engines) if engines else target


def installation_for_binary(path):
    """The installation of a server binary given by path, told by the binary's name."""
    for cls in INSTALLATIONS:
        if path.name == cls.binary_name:
            return cls.from_binary(path)
    names = ", ".join(cls.binary_name for cls in INSTALLATIONS)
    raise PgolabError(f"cannot tell which server {path} is", hint=f"the binary must be named {names}")


__all__ = ["TARGETS", "INSTALLATIONS", "target_for", "installation_for_binary", "MariaDBInstallation",
           "MySQLInstallation", "PostgreSQLInstallation", "MariaDBTarget", "MySQLTarget", "PostgreSQLTarget"]
