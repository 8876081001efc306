/*
 * quantbridge tokenizer — the text verify's model check tokenizes when the
 * user gives neither --tokens, --text nor --text-file (docs/verify.md,
 * "Model check"). Written for this project: a few paragraphs of everyday
 * English, German, French, Chinese and Russian, a small Python function
 * and a line of figures, so that the perplexity it reports covers several
 * scripts, code and numbers. A few hundred tokens (323 in Gemma 3's
 * vocabulary, 350 in llama3's, 353 in qwen3's, 422 in llama2's): enough
 * positions for a KL mean and a perplexity ratio to mean something, few
 * enough for three forward passes of a small model in seconds (the
 * attention is quadratic in them).
 */
#include "tokenizer.h"

const char *qbh_tok_sample_text(void)
{
    return "The library opens at nine on weekdays, but the reading room upstairs "
           "stays quiet until the students arrive after lunch. Last spring the "
           "city repaired its roof, replaced the old lamps with brighter ones "
           "and added a small garden behind the building, where people now eat "
           "sandwiches and argue about books.\n"
           "Am Samstag fahren wir mit dem Zug nach Freiburg. Die Fahrt dauert "
           "etwa zwei Stunden, und unterwegs sieht man Weinberge, kleine Dörfer "
           "und den Rhein. Meine Schwester möchte unbedingt den Münster "
           "besichtigen, ich dagegen suche ein gutes Café.\n"
           "Le marché du dimanche commence tôt : les producteurs installent "
           "leurs étals avant le lever du soleil. On y trouve des fromages de "
           "chèvre, du pain encore chaud et des pommes qui viennent des vergers "
           "voisins. Les enfants préfèrent les crêpes.\n"
           "今天下午我们在图书馆讨论了新的课程安排。"
           "老师建议每周多做一次练习，并且把作业按时交上来。"
           "大家都觉得这个计划很合理。\n"
           "Вчера вечером шёл сильный дождь, поэтому мы остались дома, пили чай "
           "и читали старые письма бабушки. Утром солнце снова светило над "
           "рекой.\n"
           "def mean(values):\n"
           "    total = sum(values)\n"
           "    return total / len(values) if values else 0.0\n"
           "The invoice lists 3 items: 12 pens at 1.25 each, 4 notebooks at 3.80 "
           "and one lamp for 27.99, so the total is 57.19 before the 19% tax.\n";
}
