// SseStream — reads a server-sent event stream as it arrives (text/event-stream, the way OpenAI-
// compatible servers stream replies): bytes in any pieces → the data of each complete event.
// Lines end in LF, CRLF or CR; "data:" lines of one event are joined with "\n"; comments (":…"),
// "event:", "id:" and "retry:" fields are skipped. Bounded: an event larger than kMaxEventBytes
// makes the stream fail (failed() says so) rather than grow without end. Any thread, one owner.
#pragma once
#include <QByteArray>
#include <QList>

class SseStream {
public:
    static constexpr qsizetype kMaxEventBytes = 4 * 1024 * 1024;

    // The data of each event completed by these bytes, in order ("[DONE]" included as it came).
    QList<QByteArray> feed(const QByteArray& bytes);
    bool failed() const { return failed_; }
    // Whether bytes of an event not yet complete are held (a stream that ends with some was cut).
    bool pending() const { return !line_.isEmpty() || hasData_; }

private:
    void takeLine(QList<QByteArray>& events);

    QByteArray line_;  // the line being read
    QByteArray data_;  // the event's data so far
    bool hasData_ = false;
    bool afterCr_ = false;  // the last byte was a CR (a following LF belongs to it)
    bool failed_ = false;
};
