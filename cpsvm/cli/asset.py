"""Placeholder until its issue lands: the entry point exists and says so."""

from .common import not_implemented_command, run

command = not_implemented_command(
    "asset_learn", "ASSET (Lee & Wright), which has no command line of its own")


def main(argv=None):
    run(command, argv, "asset_learn")


if __name__ == "__main__":
    main()
