from __future__ import annotations

import pytest

from esbridge.errors import DependencyMissing
from esbridge.service import HTTP_DEPENDENCIES, MCP_DEPENDENCIES, require


def test_a_missing_dependency_names_the_service_extra() -> None:
    with pytest.raises(DependencyMissing, match=r"pip install 'esbridge\[service\]'"):
        require({"esbridge_no_such_module": "no-such-package"}, "esbridge serve")


def test_the_installed_service_dependencies_are_found() -> None:
    require({**HTTP_DEPENDENCIES, **MCP_DEPENDENCIES}, "esbridge serve")
