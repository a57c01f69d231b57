from inventory.render import label


def test_label_escapes_markup_but_keeps_quotes():
    assert label('Salt & "Pepper" <fine>', 3) == '<li>Salt &amp; "Pepper" &lt;fine&gt;: 3</li>'
