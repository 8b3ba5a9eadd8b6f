package esbridge.analysis;

import java.util.regex.Pattern;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.elasticsearch.plugin.Inject;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.TokenizerFactory;
import org.elasticsearch.plugin.settings.AnalysisSettings;
import org.elasticsearch.plugin.settings.IntSetting;
import org.elasticsearch.plugin.settings.StringSetting;

/** The {@code pattern} tokenizer: splits on a regular expression (or emits one of its groups). */
@NamedComponent("pattern")
public final class PatternTokenizerFactory implements TokenizerFactory {
    @AnalysisSettings
    public interface Settings {
        @StringSetting(path = "pattern", defaultValue = "\\W+")
        String pattern();

        @IntSetting(path = "group", defaultValue = -1)
        int group();
    }

    private final Pattern pattern;
    private final int group;

    @Inject
    public PatternTokenizerFactory(Settings settings) {
        this.pattern = Pattern.compile(settings.pattern());
        this.group = settings.group();
    }

    @Override
    public Tokenizer create() {
        return new PatternTokenizer(pattern, group);
    }
}
