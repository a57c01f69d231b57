"""Language of the shop front."""
import locale


def default_language():
    lang, _encoding = locale.getdefaultlocale()
    return (lang or "en_US").split("_")[0]
