"""Tool registration: docstrings become the schema the model sees; arguments are validated strictly."""

from __future__ import annotations

import pytest

from pipeline.domains.retail.tools import TOOLS, WRITE_TOOLS
from pipeline.world.tools import ToolError, ToolRegistry, _parse_docstring, make_tool
from tests.needs import need_module


def _sample(s, order_id: str, item_ids: list[str], note: str = "") -> str:
    """Do a sample thing to an order.

    A second paragraph of description.

    Args:
        order_id: The order id, such as '#W0000000'.
        item_ids (list[str]): The items, continued
            on a second line.
        note: An optional note.

    Returns:
        something: not a parameter.
    """
    return "ok"


def test_parse_docstring_description_args_and_continuations():
    description, args = _parse_docstring(_sample.__doc__)
    assert description == "Do a sample thing to an order.\n\nA second paragraph of description."
    assert args == {
        "order_id": "The order id, such as '#W0000000'.",
        "item_ids": "The items, continued on a second line.",
        "note": "An optional note.",
    }


def test_parse_docstring_without_args_section():
    assert _parse_docstring("Just a description.") == ("Just a description.", {})
    assert _parse_docstring("") == ("", {})


def test_make_tool_schema_required_defaults_and_types():
    spec = make_tool(_sample, "write", private=True)
    assert (spec.name, spec.kind, spec.private) == ("_sample", "write", True)
    fn = spec.json_schema()
    assert fn["type"] == "function"
    params = fn["function"]["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["order_id", "item_ids"]
    assert params["additionalProperties"] is False
    assert params["properties"]["order_id"] == {"type": "string", "description": "The order id, such as '#W0000000'."}
    assert params["properties"]["item_ids"]["type"] == "array"
    assert params["properties"]["item_ids"]["items"] == {"type": "string"}
    assert params["properties"]["note"]["default"] == ""
    assert "title" not in params
    assert all("title" not in p for p in params["properties"].values())


def test_validate_fills_defaults_and_is_strict():
    spec = make_tool(_sample, "write", private=False)
    assert spec.validate({"order_id": "#W1", "item_ids": ["1", "2"]}) == {
        "order_id": "#W1",
        "item_ids": ["1", "2"],
        "note": "",
    }
    bad = [
        ({"order_id": 1, "item_ids": []}, "order_id"),  # int for str: no coercion
        ({"order_id": "#W1", "item_ids": "1"}, "item_ids"),  # a string is not a list
        ({"order_id": "#W1", "item_ids": [1]}, "item_ids.0"),
        ({"order_id": "#W1"}, "item_ids: Field required"),
        ({"order_id": "#W1", "item_ids": [], "extra": 1}, "extra: Extra inputs are not permitted"),
        ({"order_id": None, "item_ids": []}, "order_id"),
    ]
    for arguments, fragment in bad:
        with pytest.raises(ToolError) as info:
            spec.validate(arguments)
        assert info.value.category == "invalid_arguments"
        assert fragment in str(info.value), str(info.value)
        assert str(info.value).startswith("invalid arguments for _sample:")


@pytest.mark.parametrize("arguments", [None, [], "order_id=#W1", 3, ["#W1"]])
def test_validate_refuses_arguments_that_are_not_an_object(arguments):
    spec = make_tool(_sample, "read", private=False)
    with pytest.raises(ToolError, match="must be a JSON object") as info:
        spec.validate(arguments)
    assert info.value.category == "invalid_arguments"


def test_registry_keeps_order_and_lookup():
    reg = ToolRegistry()

    @reg.register("read")
    def b(s, x: str) -> str:
        """B.

        Args:
            x: An x.
        """
        return x

    @reg.register("generic")
    def a(s) -> str:
        """A."""
        return "a"

    assert list(reg.tools) == ["b", "a"]
    assert "b" in reg and "c" not in reg
    assert reg["b"].func is b
    assert [sch["function"]["name"] for sch in reg.schemas()] == ["b", "a"]
    assert reg["a"].json_schema()["function"]["parameters"]["required"] == []


EXPECTED_TOOLS = {
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_user_details",
    "get_order_details",
    "get_product_details",
    "get_item_details",
    "list_all_product_types",
    "calculate",
    "transfer_to_human_agents",
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_pending_order_items",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
    "modify_user_address",
}


def test_retail_tool_set_and_kinds():
    assert set(TOOLS.tools) == EXPECTED_TOOLS
    expected_writes = {
        "cancel_pending_order",
        "modify_pending_order_address",
        "modify_pending_order_payment",
        "modify_pending_order_items",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
        "modify_user_address",
    }
    assert expected_writes == WRITE_TOOLS
    assert all(TOOLS[name].private for name in WRITE_TOOLS)
    assert {n for n, t in TOOLS.tools.items() if t.private} == WRITE_TOOLS | {"get_user_details", "get_order_details"}


@pytest.mark.parametrize("name", sorted(EXPECTED_TOOLS))
def test_every_retail_tool_schema_is_documented(name):
    fn = TOOLS[name].json_schema()
    assert fn["type"] == "function"
    assert fn["function"]["name"] == name
    assert fn["function"]["description"].strip(), f"{name} has no description"
    assert "Args:" not in fn["function"]["description"]
    params = fn["function"]["parameters"]
    assert params["type"] == "object"
    assert isinstance(params["required"], list)
    assert set(params["required"]) <= set(params["properties"])
    assert params["additionalProperties"] is False
    for arg, prop in params["properties"].items():
        assert prop.get("description", "").strip(), f"{name}.{arg} has no description"
        assert "type" in prop


def test_every_retail_tool_schema_is_valid_json_schema():
    jsonschema = need_module("jsonschema", install='pip install -e ".[dev]"')
    for schema in TOOLS.schemas():
        params = schema["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
    # and the schema agrees with the validator on a sample call
    params = TOOLS["modify_pending_order_items"].json_schema()["function"]["parameters"]
    good = {"order_id": "#W1", "item_ids": ["1"], "new_item_ids": ["2"], "payment_method_id": "paypal_1"}
    jsonschema.validate(good, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "surprise": 1}, params)
