"""``audit-cli``'s subcommands, one module each: ``run(...)`` computes a typed report (a
frozen dataclass) and ``render(report, out, ...)`` prints it, human or ``--json``, and
returns the exit code it decides from the report; ``command(args, out)`` joins the two
for the parser (``audit_cli.main``)."""
