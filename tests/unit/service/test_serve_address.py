"""``esbridge serve`` on an address it cannot listen on (another sidecar has the port): one ``Error:`` line naming
the address and the settings that chose it, exit code 1, before the model loads; uvicorn logged its own line and
exited 3."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from esbridge.cli import main


def test_a_port_in_use_is_an_error_line_naming_the_address() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--port", str(port), "--index", "notes"])
    assert result.exit_code == 1, result.output
    assert f"Error: cannot listen on 127.0.0.1:{port} (service.host, service.port): " in result.stderr
    assert "in use" in result.stderr


def test_a_host_that_names_no_address_of_this_machine_is_an_error_line() -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine.
    args = ["serve", "--host", "192.0.2.1", "--port", "0", "--index", "notes"]
    result = CliRunner().invoke(main, args, env={"ESBRIDGE_API_KEYS": "test-key-0123456789"})
    assert result.exit_code == 1, result.output
    assert "Error: cannot listen on 192.0.2.1:0 (service.host, service.port): " in result.stderr
