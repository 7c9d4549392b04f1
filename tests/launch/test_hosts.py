"""Hosts-file parsing: DistDGL ip_config format, errors name the file, line and value."""
from __future__ import annotations

import pytest

from bgl.errors import LaunchError
from bgl.launch.hosts import Host, parse_hosts_file, parse_hosts_text


def test_parses_ips_ports_comments_and_blank_lines(tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_text("# two machines\n\n10.0.0.1 30050\n  10.0.0.2   # no port\n::1 4000\n")
    hosts = parse_hosts_file(path)
    assert hosts == [Host("10.0.0.1", 30050, 3), Host("10.0.0.2", None, 4), Host("::1", 4000, 5)]
    assert hosts[2].url_host() == "[::1]"
    assert hosts[0].url_host() == "10.0.0.1"


@pytest.mark.parametrize("text, needle", [
    ("10.0.0.1\nnode-7\n", ":2: 'node-7' is not an IP address"),
    ("10.0.0.300\n", ":1: '10.0.0.300' is not an IP address"),
    ("10.0.0.1 70000\n", ":1: port must be in 1..65535, got 70000"),
    ("10.0.0.1 0\n", ":1: port must be in 1..65535, got 0"),
    ("\n\n10.0.0.1 http\n", ":3: port must be an integer 1..65535, got 'http'"),
    ("10.0.0.1 1 2\n", ":1: expected 'IP [PORT]', got '10.0.0.1 1 2'"),
    ("10.0.0.1 5\n10.0.0.1 5\n", ":2: duplicate host '10.0.0.1 5' (first on line 1)"),
    ("# only a comment\n\n", "no hosts"),
    ("", "no hosts"),
])
def test_bad_input_names_line_and_value(text, needle):
    with pytest.raises(LaunchError) as err:
        parse_hosts_text(text, source="hosts.txt")
    assert needle in str(err.value)
    assert str(err.value).startswith("hosts.txt")


def test_missing_file_is_a_launch_error(tmp_path):
    with pytest.raises(LaunchError, match="does not exist"):
        parse_hosts_file(tmp_path / "nope.txt")
