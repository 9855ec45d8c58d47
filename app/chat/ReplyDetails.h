// ReplyDetails — the small print under a reply (how many tokens, how fast, what ended it), kept as
// data and put into words only when shown.
//
// A conversation is stored once and may be reopened in another language (View > Language applies
// from the next start), so messages.details holds a JSON array with one part per turn that wrote
// the reply — the first, then each Continue — and display() words it in the language and locale
// in use. A details string from before this format (plain text) is shown as it was written.
#pragma once
#include <QString>

namespace reply_details {

// What ended a part that has no figures of its own.
// ConnectionLost: a remote server's reply was cut off (the server went away mid-reply).
enum class Ending { Figures, Failed, DeviceLost, AppClosed, ConnectionLost };

struct Part {
    Ending ending = Ending::Figures;
    qint64 tokens = 0;
    double tokensPerSecond = 0;  // 0: not measured (shown without a rate)
    double firstTokenMs = 0;
    QString stopReason;      // lantern::TurnStats::stop_reason ("eos", "max_tokens", ...)
    bool continued = false;  // written by Continue
    QString continuedBy;     // the model that continued it, when not the one that began it
    // Of its tokens, those written in steps shared with the API server's replies (InferenceWorker::
    // replyShared): said, because sharing is why such a reply's rate is lower than the model's.
    qint64 besideApi = 0;
};

// `stored` (what messages.details holds, possibly empty) with `part` added at its end.
QString append(const QString& stored, const Part& part);
// The line shown under the message, in the current language ("" for nothing).
QString display(const QString& stored);

}  // namespace reply_details
