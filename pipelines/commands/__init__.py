"""One module per `grpo` subcommand: HELP, add_arguments(parser), run(args) -> int."""
