// lantern/scheduler.h — continuous batching: several generations share every engine step.
//
// Each step() builds one batch: first every running generation's next token (decode), then
// prompt chunks of waiting generations (chunked prefill) until the per-step token budget is used.
// A generation's prompt may take several steps; a new request joins at the next step while the
// others keep decoding, so a long prompt never stalls the running replies. A prompt whose start an
// earlier request computed takes those tokens from the KV prefix cache. One step = one
// Engine::step = one command buffer, one submit.
//
// The replies need not all fit the KV cache at full length at once: a generation is admitted
// (first come, first served) when its prompt's blocks fit beside what the running ones still need,
// and when a step's tokens do not fit, the generation admitted last is preempted: its sequence is
// freed (its full blocks stay in the prefix cache), it waits at the head of the queue, and when
// room is back it takes those blocks again, recomputes the rest (the token it had sampled last
// included) and goes on: its reply is the one it would have been. A generation alone without room (the cache,
// or its share, full) ends with "context_full". So a server can run many replies in a cache sized
// for a few full contexts, and a long reply slows the others instead of failing them.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/sampling.h"
#include "lantern/stop_reason.h"

namespace lantern {

using RequestId = uint32_t;

struct GenerationRequest {
    std::vector<int32_t> prompt;       // token ids, BOS included if wanted
    SamplingSettings settings;         // max_new_tokens bounds the reply
    std::vector<int32_t> stop_tokens;  // e.g. EOS; generation ends when one is sampled
    // Called for each generated token (not for a stop token), on the thread that calls step().
    std::function<void(RequestId, int32_t token)> on_token;
    // Called for each generated token (not for a stop token) with what the sampler knew: the
    // token's probability and, when settings.n_probs > 0, the most likely candidates (before
    // on_token, on the same thread).
    std::function<void(RequestId, const Sample&)> on_sample;
    // Called before each token is sampled, with that position's logits to change: a constraint
    // sets the logits of tokens that may not come next to -infinity (the API server's JSON mode).
    std::function<void(RequestId, std::vector<float>& logits)> constrain_logits;
    // Called once when the generation gets its sequence, with how many prompt tokens came from the
    // KV prefix cache (computed by an earlier request) rather than being computed again.
    std::function<void(RequestId, uint32_t cached_tokens)> on_admitted;
    // Called each time the generation gives its KV blocks back for want of room; it waits and
    // then resumes by itself, its reply unchanged (only later).
    std::function<void(RequestId)> on_preempted;
    // Called once when the request ends: EndOfText, MaxTokens, ContextFull or Cancelled.
    std::function<void(RequestId, StopReason reason)> on_finish;
};

struct SchedulerStepStats {
    uint32_t decode_tokens = 0, prefill_tokens = 0, sequences = 0;
    uint32_t preempted = 0;  // generations preempted before this step for want of KV blocks
    uint32_t waiting = 0;    // generations without a sequence after the step (not yet admitted, or preempted)
    uint32_t outside_tokens = 0;  // of step_with's item (not in decode_tokens or prefill_tokens)
    double ms = 0;
};

class Scheduler {
public:
    // `token_budget`: most tokens per step (decodes count one each); at most the engine's
    // max_step_tokens. `max_running`: generations decoding at once (the engine's max_sequences).
    // `max_kv_blocks`: most KV blocks the generations hold together, so that the rest of the
    // cache stays free for a sequence the engine serves beside them (the desktop app's chat);
    // 0 = the whole cache.
    Scheduler(Engine& engine, uint32_t token_budget, uint32_t max_running, uint32_t max_kv_blocks = 0);
    ~Scheduler();

    // Throws Error(ContextFull) when the prompt cannot fit: the context length, or the KV blocks
    // the generations may hold.
    RequestId submit(GenerationRequest request);
    void cancel(RequestId id);
    // Runs one engine step. Returns false when there is nothing to do.
    bool step(SchedulerStepStats* stats = nullptr);
    // The same step with one more item, of a sequence the scheduler does not own (the desktop
    // app's chat decoding its reply beside the API's), last in the batch, so the two share one
    // engine step rather than taking turns; runs even when no generation is pending. The item's
    // tokens count against the step's tokens, at most `max_tokens` with it (0: the budget; a
    // small one keeps a client's long prompt from slowing the host's tokens: prompt chunks then
    // come a few tokens a step), and its new KV blocks come out of the free ones before the
    // generations' room (not out of their share). It must want its last token's logits, which
    // land in `outside_logits` as soon as the engine step ran, before any generation's
    // callback, so a caller catching a callback's exception knows its item went in. A failed
    // engine step leaves every sequence as it was (Engine::step), the item's included.
    bool step_with(const StepItem& outside, std::vector<float>& outside_logits, uint32_t max_tokens = 0,
                   SchedulerStepStats* stats = nullptr);
    // Steps until every request has finished.
    void run();
    size_t pending() const;
    size_t waiting() const;  // of pending(), those without a sequence (not admitted yet, or preempted)
    // The engine sequences the generations hold now, in admission order (so a caller that shares
    // the engine, such as the app's KV cache panel, can tell them from its own).
    std::vector<SequenceId> sequences() const;
    uint64_t preemptions() const;  // since construction

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lantern
