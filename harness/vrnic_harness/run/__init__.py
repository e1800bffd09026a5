"""guest-tests/run: the scenario registry, the runner, the check functions grouped by topic, the bench."""
