from tests.conftest import run_cli


def test_help_lists_commands():
    r = run_cli("--help")
    assert r.returncode == 0
    for cmd in ("check", "estimate", "explain", "rules", "dryrun"):
        assert cmd in r.stdout


def test_unknown_option_is_usage_error():
    r = run_cli("check", "--no-such-option")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
