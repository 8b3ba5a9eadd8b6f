package esbridge.analysis;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.AnalyzerFactory;

/** The {@code english} analyzer: what analysis-common's provider builds when given no settings. */
@NamedComponent("english")
public final class EnglishAnalyzerFactory implements AnalyzerFactory {
    @Override
    public Analyzer create() {
        return new EnglishAnalyzer();
    }
}
