from ledger.plugins import load_plugin


def test_load_plugin(tmp_path):
    plugin = tmp_path / "markup.py"
    plugin.write_text("def price(cost):\n    return round(cost * 1.2, 2)\n")
    assert load_plugin(str(plugin))(10) == 12.0
