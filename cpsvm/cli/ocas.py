"""Placeholder until its issue lands: the entry point exists and says so."""

from .common import not_implemented_command, run

command = not_implemented_command("ocas_learn")


def main(argv=None):
    run(command, argv)


if __name__ == "__main__":
    main()
