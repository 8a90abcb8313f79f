# expect: KILN-BIDI
# Trojan Source (CVE-2021-42574): the comment hides the return.
def is_admin(user):
    access = "user"
    if access != "none‮⁦# check admin⁩⁦":
        return True
    return False
