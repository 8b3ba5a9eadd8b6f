package esbridge.analysis;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.miscellaneous.WordDelimiterGraphFilter;
import org.apache.lucene.analysis.miscellaneous.WordDelimiterIterator;
import org.elasticsearch.plugin.Inject;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.TokenFilterFactory;
import org.elasticsearch.plugin.settings.AnalysisSettings;
import org.elasticsearch.plugin.settings.BooleanSetting;

/** The {@code word_delimiter_graph} token filter with analysis-common's setting names and defaults. */
@NamedComponent("word_delimiter_graph")
public final class WordDelimiterGraphFilterFactory implements TokenFilterFactory {
    @AnalysisSettings
    public interface Settings {
        @BooleanSetting(path = "generate_word_parts", defaultValue = true)
        boolean generateWordParts();

        @BooleanSetting(path = "generate_number_parts", defaultValue = true)
        boolean generateNumberParts();

        @BooleanSetting(path = "catenate_words", defaultValue = false)
        boolean catenateWords();

        @BooleanSetting(path = "catenate_numbers", defaultValue = false)
        boolean catenateNumbers();

        @BooleanSetting(path = "catenate_all", defaultValue = false)
        boolean catenateAll();

        @BooleanSetting(path = "split_on_case_change", defaultValue = true)
        boolean splitOnCaseChange();

        @BooleanSetting(path = "preserve_original", defaultValue = false)
        boolean preserveOriginal();

        @BooleanSetting(path = "split_on_numerics", defaultValue = true)
        boolean splitOnNumerics();

        @BooleanSetting(path = "stem_english_possessive", defaultValue = true)
        boolean stemEnglishPossessive();

        @BooleanSetting(path = "ignore_keywords", defaultValue = false)
        boolean ignoreKeywords();

        @BooleanSetting(path = "adjust_offsets", defaultValue = true)
        boolean adjustOffsets();
    }

    private final int flags;
    private final boolean adjustOffsets;

    @Inject
    public WordDelimiterGraphFilterFactory(Settings settings) {
        int f = 0;
        if (settings.generateWordParts()) f |= WordDelimiterGraphFilter.GENERATE_WORD_PARTS;
        if (settings.generateNumberParts()) f |= WordDelimiterGraphFilter.GENERATE_NUMBER_PARTS;
        if (settings.catenateWords()) f |= WordDelimiterGraphFilter.CATENATE_WORDS;
        if (settings.catenateNumbers()) f |= WordDelimiterGraphFilter.CATENATE_NUMBERS;
        if (settings.catenateAll()) f |= WordDelimiterGraphFilter.CATENATE_ALL;
        if (settings.splitOnCaseChange()) f |= WordDelimiterGraphFilter.SPLIT_ON_CASE_CHANGE;
        if (settings.preserveOriginal()) f |= WordDelimiterGraphFilter.PRESERVE_ORIGINAL;
        if (settings.splitOnNumerics()) f |= WordDelimiterGraphFilter.SPLIT_ON_NUMERICS;
        if (settings.stemEnglishPossessive()) f |= WordDelimiterGraphFilter.STEM_ENGLISH_POSSESSIVE;
        if (settings.ignoreKeywords()) f |= WordDelimiterGraphFilter.IGNORE_KEYWORDS;
        this.flags = f;
        this.adjustOffsets = settings.adjustOffsets();
    }

    @Override
    public TokenStream create(TokenStream input) {
        return new WordDelimiterGraphFilter(input, adjustOffsets, WordDelimiterIterator.DEFAULT_WORD_DELIM_TABLE, flags, null);
    }
}
