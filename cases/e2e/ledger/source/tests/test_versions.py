from ledger.versions import newest


def test_newest_compares_numerically():
    assert newest(["1.9.2", "1.10.0", "1.2"]) == "1.10.0"
