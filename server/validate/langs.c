/* langs.c: the languages the validator knows, in one table. Adding a
 * language is a grammar in grammars.lock, a lang_NAME.c and rule files. */
#include "validate/internal.h"

#include "core/util.h"

const struct val_lang *const val_langs[] = {
    &val_lang_python,
    &val_lang_bash,
    &val_lang_javascript,
};
const size_t val_langs_count = ARRAY_SIZE(val_langs);
