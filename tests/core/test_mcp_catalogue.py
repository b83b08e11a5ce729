"""The MCP catalogue (pure): names, signatures, lookup and the prompt's ``mcp`` app."""

from __future__ import annotations

from jupyter_agent.core.mcp.catalogue import McpCatalogue, python_name, signature_of

RAW = {
    "servers": [
        {
            "name": "demo-files",
            "tools": [
                {
                    "name": "read-file",
                    "description": "Read a file.\n  Whole.",
                    "input_schema": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "limit": {"type": "integer", "default": 100},
                            "mode": {"enum": ["text", "bytes"]},
                        },
                        "required": ["path"],
                    },
                    "mutating": False,
                },
                {"name": "delete", "description": "", "input_schema": {}, "mutating": True},
            ],
            "error": None,
        },
        {"name": "down", "tools": [], "error": "connection refused"},
    ]
}


def test_python_names() -> None:
    assert python_name("read-file") == "read_file"
    assert python_name("2fa") == "_2fa"
    assert python_name("class") == "class_"
    assert python_name("a.b c") == "a_b_c"
    assert python_name("") == "_"


def test_signature_puts_required_first_and_shows_defaults() -> None:
    schema = RAW["servers"][0]["tools"][0]["input_schema"]  # type: ignore[index]
    assert signature_of("f", schema) == (
        "f(path: str, limit: int = 100, mode: Literal['text', 'bytes'] = None) -> Any"
    )
    assert signature_of("g", {}) == "g() -> Any"


def test_round_trip_and_lookup() -> None:
    cat = McpCatalogue.from_json(RAW)
    assert McpCatalogue.from_json(cat.to_json()) == cat
    found = cat.find("demo_files.read_file")
    assert found is not None
    assert found[1].name == "read-file"
    assert cat.find("demo-files.read_file") is None
    assert cat.find("nodot") is None
    assert cat.find("demo_files.delete") is not None
    assert not McpCatalogue.from_json(None)
    assert not McpCatalogue.from_json({"servers": "x"})


def test_app_spec_lists_one_line_per_tool_and_names_unreachable_servers() -> None:
    spec = McpCatalogue.from_json(RAW).app_spec()
    assert spec is not None
    assert [m.signature.split("(")[0] for m in spec.methods] == [
        "mcp.demo_files.read_file",
        "mcp.demo_files.delete",
    ]
    assert spec.methods[0].doc == "Read a file. Whole."
    assert not spec.methods[0].mutation
    assert spec.methods[1].mutation
    assert "may wait for the person" in spec.methods[1].doc
    assert "down (connection refused)" in spec.doc
    assert McpCatalogue().app_spec() is None
