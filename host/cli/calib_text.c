/*
 * quantbridge host — the built-in calibration text (`convert --calibration
 * builtin`): written for this project, not taken from any corpus. Prose in
 * English, French, German, Spanish, Italian, Portuguese, Chinese and
 * Japanese, a dialogue, a list, code and numbers, so that the statistics
 * see more than one kind of input. It must differ from every evaluation
 * text of bench/quality and tests/real (tests/real/text.txt).
 */
#include "calibrate.h"

static const char builtin_text[] =
    "The river town woke slowly on market days. Before sunrise the bakers had already lit "
    "their ovens, and by seven o'clock the square was full of carts loaded with apples, "
    "cabbages, cheese wrapped in cloth and baskets of brown eggs. Children ran between the "
    "stalls while their parents argued about prices that had not changed in years. An old "
    "clockmaker opened his shutters last of all; he claimed that nobody needed to know the "
    "time before the church bell told them anyway.\n\n"
    "Engineers who design bridges think about loads that may never come: the heaviest "
    "truck, the strongest wind, the coldest night when steel shrinks and joints open. A "
    "good design carries each of these with a margin, and it fails, if it must, slowly and "
    "visibly rather than all at once. The same idea applies to software: check the inputs, "
    "say clearly what went wrong, and never return an answer that only looks right.\n\n"
    "Le petit train de montagne quitte la gare à huit heures précises. Il grimpe entre les "
    "sapins, traverse deux tunnels et s'arrête devant un lac où l'eau reste froide même en "
    "août. Les voyageurs descendent, prennent une photo, puis remontent en parlant du temps "
    "qu'il fera demain.\n\n"
    "Im Winter wird es in dem kleinen Dorf früh dunkel. Die Leute sitzen dann in der Küche, "
    "trinken Tee und erzählen Geschichten von früher, als der Schnee noch bis an die Fenster "
    "reichte und der Bus tagelang nicht fahren konnte.\n\n"
    "Mi abuela guardaba las recetas en una caja de lata. Ninguna tenía cantidades exactas: "
    "«un poco de harina», «azúcar hasta que parezca bien», «hornear hasta que huela a "
    "domingo». Aun así, todos los pasteles le salían perfectos.\n\n"
    "Il vecchio faro non funziona più, ma i pescatori lo salutano ancora quando tornano in "
    "porto la sera. Dicono che porti fortuna, e nessuno ha il coraggio di dire il "
    "contrario.\n\n"
    "A biblioteca da cidade abre às nove horas. Os estudantes chegam cedo para conseguir "
    "uma mesa perto da janela, onde a luz é melhor e o barulho da rua quase não se ouve.\n\n"
    "春天的时候，山上的花一片一片地开了。孩子们放学以后喜欢去河边玩，老人们坐在树下下棋，"
    "谈论今年的收成会不会比去年好。\n\n"
    "駅の前に小さなパン屋があります。毎朝六時に店を開けて、焼きたてのパンを売っています。"
    "近所の人たちは、仕事に行く前にそこでコーヒーを飲むのが好きです。\n\n"
    "\"Did you lock the door?\" she asked.\n"
    "\"I think so. Maybe. Should I go back and check?\"\n"
    "\"We are already halfway to the station.\"\n"
    "\"Then it is locked,\" he said, and they both laughed.\n\n"
    "Shopping list: 2 kg potatoes, 500 g flour, 1 litre of milk, 12 eggs, 3 lemons, "
    "olive oil, black pepper, 250 g butter.\n\n"
    "def mean_square(rows):\n"
    "    \"\"\"Mean of x * x over the rows, column by column.\"\"\"\n"
    "    n = len(rows)\n"
    "    return [sum(r[j] * r[j] for r in rows) / n for j in range(len(rows[0]))]\n\n"
    "for (size_t i = 0; i < n; i++) {\n"
    "    if (buf[i] == '\\n')\n"
    "        lines++;\n"
    "}\n\n"
    "In 1969, 1,024 bytes were a lot of memory; by 2024 a phone held 8,589,934,592 of them. "
    "The ratio is 2^23, about 8.4 million, in 55 years: a doubling every 2.4 years on "
    "average. Temperatures that night fell from 12.5 °C to -3.0 °C, and the wind reached "
    "85 km/h near the coast.\n";

const char *qbh_calib_builtin_text(void)
{
    return builtin_text;
}
