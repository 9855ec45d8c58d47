#include "remote/SseStream.h"

QList<QByteArray> SseStream::feed(const QByteArray& bytes) {
    QList<QByteArray> events;
    if (failed_) return events;
    for (const char c : bytes) {
        if (afterCr_) {
            afterCr_ = false;
            if (c == '\n') continue;  // CRLF: the CR ended the line
        }
        if (c == '\n' || c == '\r') {
            afterCr_ = c == '\r';
            takeLine(events);
            if (failed_) return events;
            continue;
        }
        line_.append(c);
        if (line_.size() + data_.size() > kMaxEventBytes) {
            failed_ = true;
            return events;
        }
    }
    return events;
}

void SseStream::takeLine(QList<QByteArray>& events) {
    if (line_.isEmpty()) {  // a blank line ends the event
        if (hasData_) events.append(data_);
        data_.clear();
        hasData_ = false;
        return;
    }
    if (line_.startsWith("data")) {
        QByteArray value;
        if (line_.size() == 4) {
            value = QByteArray();
        } else if (line_.at(4) == ':') {
            value = line_.mid(line_.size() > 5 && line_.at(5) == ' ' ? 6 : 5);
        } else {
            line_.clear();  // a field whose name only begins with "data"
            return;
        }
        if (hasData_) data_.append('\n');
        data_.append(value);
        hasData_ = true;
        if (data_.size() > kMaxEventBytes) failed_ = true;
    }
    line_.clear();
}
