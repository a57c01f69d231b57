"""HTML labels for the shelf display."""
import cgi


def label(name, quantity):
    return "<li>%s: %d</li>" % (cgi.escape(name), quantity)
