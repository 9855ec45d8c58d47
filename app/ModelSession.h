// ModelSession — which model is loaded, on which device and with which context length, and the
// loads that change them (UI thread).
//
// open() asks the InferenceWorker (through loadRequested, queued) for a load; its results come
// back through the slots. A new context length or device that does not load is rolled back: the
// setting goes back, the window is told why (rolledBack), and the model is loaded again as it was.
// Context lengths are remembered per model file, the device for the next start (Preferences).
// Or the chat runs on a remote server (openRemote): Ready once it answered, with its report.
#pragma once
#include <QObject>
#include <QString>
#include <optional>

#include "remote/RemoteEndpoint.h"
#include "worker/EngineTypes.h"

class ModelSession : public QObject {
    Q_OBJECT
public:
    enum class State { NoModel, Loading, Ready };
    enum class Change { ContextLength, Device };

    explicit ModelSession(QObject* parent = nullptr);

    State state() const { return state_; }
    QString path() const { return path_; }  // loaded or loading; "" for none
    QString deviceSelector() const { return deviceSelector_; }
    // Of the loaded model, as its last successful load reported them.
    uint32_t contextLength() const { return report_.context_length; }
    const lantern::ModelInfo& model() const { return model_; }
    const lantern::DeviceInfo& device() const { return device_; }

    // Loads `path` (deviceSelector "" = the remembered device) unless a load is under way.
    void open(const QString& path, const QString& deviceSelector = {});
    // Loads the model again with this context length (0 = automatic), remembered for that file.
    void setContextLength(uint32_t length);
    // Loads the model again on another device ("" = automatic), remembered for the next start.
    void chooseDevice(const QString& selector);
    // Chats on a remote OpenAI-compatible server instead (the local model goes), unless a load
    // or a connection is under way.
    void openRemote(const RemoteEndpoint& endpoint);
    bool remote() const { return remote_; }
    const RemoteReport& remoteReport() const { return remoteReport_; }
    QString remoteName() const { return remoteEndpoint_.name; }  // the one connected or connecting

    // Worker results.
    void onLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                  const LoadReport& report);
    void onLoadFailed(const QString& message);
    void onReloading();  // the worker loads the same model again (InferenceWorker::reloadingModel)
    void onUnloaded();
    void onRemoteConnected(const RemoteReport& report);
    void onRemoteFailed(const QString& message);

signals:
    void loadRequested(const QString& path, const QString& deviceSelector, quint32 contextLength);
    void stateChanged(ModelSession::State state);
    void loadStarted(const QString& path, bool reload);  // reload: the worker's own, for the API server
    void loaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device, const LoadReport& report);
    // A changed setting did not load: `asked` (a length in tokens, or a device selector) is undone
    // and the model is loaded again as before, once this signal returns.
    void rolledBack(ModelSession::Change change, const QString& path, const QString& asked,
                    const QString& message);
    void failed(const QString& path, const QString& message);  // nothing is loaded now
    void unloaded();
    void deviceSelectorChanged(const QString& selector);
    void remoteRequested(const RemoteEndpoint& endpoint);  // to the worker (connectRemote)
    void remoteConnected(const RemoteReport& report);
    void remoteFailed(const RemoteEndpoint& endpoint, const QString& message);  // nothing is loaded now

private:
    void setState(State state);

    State state_ = State::NoModel;
    QString path_;
    QString deviceSelector_;
    lantern::ModelInfo model_;
    lantern::DeviceInfo device_;
    LoadReport report_;
    bool remote_ = false;
    RemoteEndpoint remoteEndpoint_;  // (its key cleared)
    RemoteReport remoteReport_;
    // While a model loads with a newly chosen context length: the length it had before, loaded
    // again if the new one fails. Likewise the device selector it had before.
    std::optional<uint32_t> contextLengthBefore_;
    std::optional<QString> deviceBefore_;
};
