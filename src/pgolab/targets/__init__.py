"""One recipe per server: how to configure, build, install, initialise, start and stop it."""

from __future__ import annotations

from ..errors import PgolabError
from .mariadb import MariaDBInstallation, MariaDBTarget
from .mysql import MySQLInstallation, MySQLTarget
from .postgresql import PostgreSQLInstallation, PostgreSQLTarget

TARGETS = {"mariadb": MariaDBTarget(), "mysql": MySQLTarget(), "postgresql": PostgreSQLTarget()}


def target_for(server: str):
    try:
        return TARGETS[server]
    except KeyError:
        raise PgolabError(f"no recipe for server {server!r}", hint=f"supported: {', '.join(TARGETS)}")


__all__ = ["TARGETS", "target_for", "MariaDBInstallation", "MySQLInstallation", "PostgreSQLInstallation",
           "MariaDBTarget", "MySQLTarget", "PostgreSQLTarget"]
