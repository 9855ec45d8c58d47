// ModelDialogs — the dialogs about loading a model (UI thread): why a changed context length or
// device did not load (the model is loaded again as before), why a model did not load at all, and
// File > Context Length…
#pragma once
#include <QString>
#include <optional>

#include "ModelSession.h"

class QWidget;

namespace model_dialogs {

// `askedName`: the context length in tokens, or the device as the Device menu names it.
void explainRollback(QWidget* parent, ModelSession::Change change, const QString& path,
                     const QString& askedName, const QString& message);
void explainLoadFailure(QWidget* parent, const QString& path, const QString& message);
// The context length chosen for the loaded model (ContextLengthDialog), nullopt when cancelled.
// `apiServer`: the API server is on (its replies share the KV cache); `cachedTokens`: the
// conversation's tokens in the cache now.
std::optional<uint32_t> chooseContextLength(QWidget* parent, const ModelSession& session, bool apiServer,
                                            uint32_t cachedTokens);

}  // namespace model_dialogs
