"""Target labels in a run: a build's own label (`rel_lto`, `noselect`, `distro`), or, when a run mixes
source trees (a version series), `<tree>:<label>` (`mariadb-11.8.6:rel_lto`)."""

SEPARATOR = ":"


def in_tree(tree: str, label: str) -> str:
    return f"{tree}{SEPARATOR}{label}"


def split(label: str) -> tuple[str, str]:
    """(tree, the build's own label); the tree is "" for a label outside a series."""
    tree, _, own = label.rpartition(SEPARATOR)
    return tree, own
