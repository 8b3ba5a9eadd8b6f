/*
 * esbridge neural-build STUB. opensearch-ml-client 3.6.0.0 is not on Maven Central, so this replaces the real
 * org.opensearch.ml.client.MachineLearningNodeClient with the four methods neural-search 3.6.0.0 calls
 * (MLCommonsClientAccessor). Every call fails the listener: ML-backed features (neural query with model_id,
 * text_embedding / sparse_encoding ingest processors, ml rerank, semantic highlighting, agentic search) do NOT work.
 * hybrid query + normalization-processor + score-ranker-processor do not use it.
 */
package org.opensearch.ml.client;

import org.opensearch.core.action.ActionListener;
import org.opensearch.ml.common.FunctionName;
import org.opensearch.ml.common.MLModel;
import org.opensearch.ml.common.input.Input;
import org.opensearch.ml.common.input.MLInput;
import org.opensearch.ml.common.output.MLOutput;
import org.opensearch.ml.common.transport.agent.MLAgentGetResponse;
import org.opensearch.ml.common.transport.execute.MLExecuteTaskResponse;
import org.opensearch.transport.client.Client;

public class MachineLearningNodeClient {
    private final Client client;

    public MachineLearningNodeClient(Client client) {
        this.client = client;
    }

    private static UnsupportedOperationException unsupported() {
        return new UnsupportedOperationException("ml-commons client is not available in this neural-search build (esbridge neural-build stub)");
    }

    public void predict(String modelId, MLInput mlInput, ActionListener<MLOutput> listener) {
        listener.onFailure(unsupported());
    }

    public void getModel(String modelId, String tenantId, ActionListener<MLModel> listener) {
        listener.onFailure(unsupported());
    }

    public void getAgent(String agentId, ActionListener<MLAgentGetResponse> listener) {
        listener.onFailure(unsupported());
    }

    public void execute(FunctionName functionName, Input input, ActionListener<MLExecuteTaskResponse> listener) {
        listener.onFailure(unsupported());
    }
}
