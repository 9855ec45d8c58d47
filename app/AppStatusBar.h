// AppStatusBar — the window's status bar: what the app is doing (state label), how much of the
// context the conversation holds (context label), the device, and the API server's label
// (UI thread). Transient messages use QStatusBar's own showMessage.
#pragma once
#include <QStatusBar>

#include <optional>

#include "remote/RemoteEndpoint.h"
#include "worker/EngineTypes.h"

class QLabel;
class StatusLabel;

class AppStatusBar : public QStatusBar {
    Q_OBJECT
public:
    // `apiLabel` (ApiServerControl::label) goes first among the permanent fields.
    explicit AppStatusBar(QLabel* apiLabel, QWidget* parent = nullptr);

    void showState(const QString& text);      // the app's state: sized to its text
    void showLiveState(const QString& text);  // changes many times a second
    void setDevice(const lantern::DeviceInfo& device);
    void clearDevice();
    void setRemote(const QString& host, remote::ServerKind kind);        // the chat runs on a remote server
    void setContextLength(uint32_t tokens) { contextLength_ = tokens; }  // 0: no model
    // The context position of a streaming reply: the token just sampled enters the context at
    // the next step; the last one of a reply that filled the context never does.
    void showStreamPosition(quint32 position);
    // The active conversation's tokens in the KV cache, as the worker reported them; shown at
    // once unless a reply streams (its frames count the token just sampled as well, so a cache
    // figure would make the bar flicker one back).
    void setCachedTokens(int tokens, bool streaming);
    void clearCachedTokens() { cachedTokens_ = -1; }
    int cachedTokens() const { return cachedTokens_; }
    // A reply ended: the bar counts what the cache holds, as the KV panel does.
    void showCachedTokens() { showContext(cachedTokens_); }

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: the device and context words

private:
    void showContext(int tokens);
    std::optional<lantern::DeviceInfo> device_info_;  // the device shown, or
    QString remoteHost_;                              // the remote server shown (host, kind)
    remote::ServerKind remoteKind_{};

    StatusLabel* state_;
    StatusLabel* context_;
    QLabel* device_;
    uint32_t contextLength_ = 0;
    int cachedTokens_ = -1;  // -1: not reported yet
};
