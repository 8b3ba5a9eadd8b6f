"""Texts and the tokens OpenSearch 3.6's standard tokenizer (Lucene, Unicode word breaks) gives them, lowercased
as the standard analyzer does."""

from __future__ import annotations

STANDARD_TOKENS = [
    ("os.path.join github.com e.g. U.S.A.", ["os.path.join", "github.com", "e.g", "u.s.a"]),
    ("v1.2 a1.b 75.1725 1,000.50 1;2 12:30", ["v1.2", "a1", "b", "75.1725", "1,000.50", "1;2", "12", "30"]),
    ("don't O'Neil's it\u2019s cats' 'quoted'", ["don't", "o'neil's", "it\u2019s", "cats", "quoted"]),
    ("foo:bar l·l a..b a,b IL-6 C:\\Users", ["foo:bar", "l·l", "a", "b", "a", "b", "il", "6", "c", "users"]),
    ("user_name _foo_ __ a_1.b 1_000", ["user_name", "_foo_", "a_1", "b", "1_000"]),
    ("日本語テキスト 🌱 👍🏽 naïve", ["日", "本", "語", "テキスト", "🌱", "👍🏽", "naïve"]),
]  # fmt: skip
