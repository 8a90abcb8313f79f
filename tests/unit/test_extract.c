/* test_extract.c: finding the code in a model's answer
 * (llm_extract_code in llm/extract.c): fences with and without a tag, ~~~
 * fences, several blocks, output blocks, prose around, a fence the answer
 * never closed, <think> sections, bare code, and answers with no code. */
#include "llm/llm.h"

#include "core/position.h"
#include "unit.h"

struct extract_case {
	const char *answer;
	const char *language;
	const char *code;  /* NULL: -ENOENT */
	const char *lang;  /* the fence's tag, or NULL */
	const char *prose; /* NULL: none */
	unsigned blocks;
	bool truncated;
};

static const struct extract_case cases[] = {
    /* 0: a tagged fence, prose around it, the lead-in line dropped. */
    {"Here is the code:\n\n```python\nprint('hi')\n```\n\nIt prints hi.\n", "python",
     "print('hi')\n", "python", "It prints hi.", 1, false},
    /* 1: no tag. */
    {"```\nls -la\n```", "bash", "ls -la\n", NULL, NULL, 1, false},
    /* 2: ~~~ fences, a longer closing fence, an info string after the tag. */
    {"~~~ sh title=\"x\"\necho ~~~ not a fence\n~~~~\n", "bash", "echo ~~~ not a fence\n", "sh",
     NULL, 1, false},
    /* 3: a ``` line inside a ~~~ fence is content. */
    {"~~~python\ns = '''\n```\n'''\n~~~\n", "python", "s = '''\n```\n'''\n", "python", NULL, 1,
     false},
    /* 4: several blocks of the language are one program, joined in order. */
    {"First the import.\n```py\nimport os\n```\nThen the "
     "print:\n```python\nprint(os.getcwd())\n```\n",
     "python", "import os\n\nprint(os.getcwd())\n", "py", "First the import.", 2, false},
    /* 5: an output block is left out when code is there. */
    {"```python\nprint(2+2)\n```\nOutput:\n```text\n4\n```\n", "python", "print(2+2)\n", "python",
     NULL, 1, false},
    /* 6: ...but taken when nothing else is there. */
    {"```output\n4\n```\n", "python", "4\n", "output", NULL, 1, false},
    /* 7: a block of another language loses to an untagged one. */
    {"```js\nconsole.log(1)\n```\n```\nprint(1)\n```\n", "python", "print(1)\n", NULL, NULL, 1,
     false},
    /* 8: only a foreign block: the first one is taken. */
    {"```js\na()\n```\n```ts\nb()\n```\n", "python", "a()\n", "js", NULL, 1, false},
    /* 9: a fence the answer never closed (cut by a length limit). */
    {"Sure.\n```python\nfor i in range(3):\n    print(i)\n", "python",
     "for i in range(3):\n    print(i)\n", "python", "Sure.", 1, true},
    /* 10: reasoning first is dropped, even when it holds a fence. */
    {"<think>\nMaybe ```python\nwrong()\n``` no.\n</think>\n```python\nright()\n```\n", "python",
     "right()\n", "python", NULL, 1, false},
    /* 11: a think that never ends holds no answer. */
    {"<think>\nhmm, ```python\nx()\n```\n", "python", NULL, NULL, NULL, 0, false},
    /* 12: <think> after the answer started is just text. */
    {"```bash\necho '<think>'\n```\n", "bash", "echo '<think>'\n", "bash", NULL, 1, false},
    /* 13: a bare answer that is all code. */
    {"import sys\n\nfor a in sys.argv:\n    print(a)\n", "python",
     "import sys\n\nfor a in sys.argv:\n    print(a)\n", NULL, NULL, 0, false},
    /* 14: prose only. */
    {"I cannot help with that request, sorry.\nPlease ask something else.\n", "python", NULL, NULL,
     NULL, 0, false},
    /* 15: nothing at all. */
    {"", "python", NULL, NULL, NULL, 0, false},
    {"   \n\n\t\n", "python", NULL, NULL, NULL, 0, false},
    /* 17: an empty fenced block is no code. */
    {"```python\n\n```\n", "python", NULL, NULL, NULL, 0, false},
    /* 18: inline code with backticks in the info string is prose. */
    {"Run ```rm -rf /``` never.\n", "bash", NULL, NULL, NULL, 0, false},
    /* 19: indented fences (up to three spaces), blank lines trimmed. */
    {"   ```python\n\n\nx = 1\n\n   ```\n", "python", "x = 1\n", "python", NULL, 1, false},
    /* 20: four spaces is not a fence: bare indented code. */
    {"    ```python\n    x = 1\n", "python", "    ```python\n    x = 1\n", NULL, NULL, 0, false},
    /* 21: a closing fence shorter than the opening one is content. */
    {"````md\n```\ninner\n```\n````\n", NULL, "```\ninner\n```\n", "md", NULL, 1, false},
    /* 22: a closing fence with text after it is content; the fence stays open. */
    {"```bash\necho a\n``` tail\necho b\n", "bash", "echo a\n``` tail\necho b\n", "bash", NULL, 1,
     true},
    /* 23: non-ASCII in code and prose, CRLF line ends (the last one becomes
     * the newline the code ends with). */
    {"Voilà :\r\n```python\r\nprint(\"h\xc3\xa9llo \xf0\x9f\x8e\x89\")\r\n```\r\nC'est tout "
     "\xe2\x9c\x85\r\n",
     "python", "print(\"h\xc3\xa9llo \xf0\x9f\x8e\x89\")\n", "python", "C'est tout \xe2\x9c\x85", 1,
     false},
    /* 24: the language asked for by an alias; tag matching ignores case. */
    {"```JavaScript\nconsole.log(1)\n```\n", "js", "console.log(1)\n", "JavaScript", NULL, 1,
     false},
    /* 25: no language given: an untagged block first. */
    {"```text\nout\n```\n```\ncode()\n```\n", NULL, "code()\n", NULL, NULL, 1, false},
};

START_TEST(extract)
{
	const struct extract_case *c = &cases[_i];
	struct llm_code code = {0};
	int r = llm_extract_code(c->answer, strlen(c->answer), c->language, &code);
	if (!c->code) {
		ck_assert_msg(r == -ENOENT, "case %d: r=%d code '%s'", _i, r,
		              r == 0 ? code.code : "");
		return;
	}
	ck_assert_msg(r == 0, "case %d: r=%d", _i, r);
	ck_assert_msg(strcmp(code.code, c->code) == 0, "case %d: code '%s'", _i, code.code);
	if (c->lang)
		ck_assert_msg(code.lang && strcmp(code.lang, c->lang) == 0, "case %d: lang %s", _i,
		              code.lang ? code.lang : "(null)");
	else
		ck_assert_msg(!code.lang, "case %d: lang %s", _i, code.lang);
	if (c->prose)
		ck_assert_msg(code.prose && strcmp(code.prose, c->prose) == 0,
		              "case %d: prose '%s'", _i, code.prose ? code.prose : "(null)");
	else
		ck_assert_msg(!code.prose, "case %d: prose '%s'", _i, code.prose);
	ck_assert_msg(code.blocks == c->blocks, "case %d: %u blocks", _i, code.blocks);
	ck_assert_int_eq(code.truncated, c->truncated);
	llm_code_release(&code);
	ck_assert_ptr_null(code.code);
}
END_TEST

/* The answer is len bytes, not a string: nothing past it is read. */
START_TEST(reads_only_len)
{
	const char *s = "```python\nx = 1\n```";
	size_t n = strlen(s);
	char *exact = malloc(n);
	memcpy(exact, s, n);
	struct llm_code code;
	ck_assert_int_eq(llm_extract_code(exact, n, "python", &code), 0);
	ck_assert_str_eq(code.code, "x = 1\n");
	llm_code_release(&code);
	/* Cut anywhere, it still answers (or says there is no code). */
	for (size_t cut = 0; cut <= n; cut++) {
		char *part = malloc(cut ? cut : 1);
		memcpy(part, s, cut);
		int r = llm_extract_code(part, cut, "python", &code);
		ck_assert_msg(r == 0 || r == -ENOENT, "cut %zu: %d", cut, r);
		if (r == 0)
			llm_code_release(&code);
		free(part);
	}
	free(exact);
}
END_TEST

/* More blocks than the extractor keeps: the first ones are used. */
START_TEST(many_blocks)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	for (int i = 0; i < 100; i++)
		buf_printf(&b, "```python\nx%d = %d\n```\n", i, i);
	struct llm_code code;
	ck_assert_int_eq(llm_extract_code(b.data, b.len, "python", &code), 0);
	ck_assert_uint_eq(code.blocks, 64);
	ck_assert(strncmp(code.code, "x0 = 0\n\nx1 = 1\n", 15) == 0);
	ck_assert_ptr_nonnull(strstr(code.code, "x63 = 63\n"));
	ck_assert_ptr_null(strstr(code.code, "x64"));
	llm_code_release(&code);
	buf_release(&b);
}
END_TEST

/* A long tag is cut to what the struct keeps, on a character boundary:
 * lang goes into JSON for the client and must stay valid UTF-8. */
START_TEST(long_tag_stays_utf8)
{
	char answer[200];
	/* 30 ASCII bytes, then "é" whose second byte would be the 32nd. */
	snprintf(answer, sizeof(answer), "```%s\xc3\xa9z\nx = 1\n```\n",
	         "abcdefghijklmnopqrstuvwxyz0123");
	struct llm_code code;
	ck_assert_int_eq(llm_extract_code(answer, strlen(answer), "python", &code), 0);
	ck_assert_ptr_nonnull(code.lang);
	ck_assert_msg(utf8_valid(code.lang, strlen(code.lang)), "lang '%s'", code.lang);
	ck_assert_str_eq(code.lang, "abcdefghijklmnopqrstuvwxyz0123");
	llm_code_release(&code);
}
END_TEST

START_TEST(language_canonical)
{
	ck_assert_str_eq(llm_language_canonical("py"), "python");
	ck_assert_str_eq(llm_language_canonical("PYTHON3"), "python");
	ck_assert_str_eq(llm_language_canonical("sh"), "bash");
	/* zsh code is not bash code: the registry has no such alias. */
	ck_assert_str_eq(llm_language_canonical("zsh"), "zsh");
	ck_assert_str_eq(llm_language_canonical("JS"), "javascript");
	ck_assert_str_eq(llm_language_canonical("node"), "javascript");
	ck_assert_str_eq(llm_language_canonical("console"), "output");
	ck_assert_ptr_null(llm_language_canonical("brainfuck"));
	ck_assert_ptr_null(llm_language_canonical(""));
	ck_assert_ptr_null(llm_language_canonical(NULL));
}
END_TEST

static Suite *extract_suite(void)
{
	Suite *s = suite_create("extract");
	TCase *tc = tcase_create("extract");
	tcase_add_loop_test(tc, extract, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, reads_only_len);
	tcase_add_test(tc, many_blocks);
	tcase_add_test(tc, long_tag_stays_utf8);
	tcase_add_test(tc, language_canonical);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(extract_suite)
