// The load drivers' reply reader: what it hands back is what the peer sent,
// whatever the framing and however the bytes are split across reads.
#include "support/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace schedext::bench {
namespace {

// A connected pair: the reader's end and the end a writer thread scripts.
class ReplyReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    if (writer_.joinable()) writer_.join();
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  // Sends `pieces` one write each, then closes the writing end when `close_after`.
  void Write(std::vector<std::string> pieces, bool close_after = false) {
    writer_ = std::thread([this, pieces = std::move(pieces), close_after] {
      for (const std::string& piece : pieces) {
        if (!SendAll(fds_[1], piece)) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (close_after) {
        close(fds_[1]);
        fds_[1] = -1;
      }
    });
  }
  int reader_fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
  std::thread writer_;
};

// Every split of `text` into pieces of `size` bytes.
std::vector<std::string> Pieces(const std::string& text, size_t size) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size(); at += size) out.push_back(text.substr(at, size));
  return out;
}

TEST_F(ReplyReaderTest, ReadsAContentLengthBodySplitAnywhere) {
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
      "{\"Error\":\"\"}";
  // Content-Length 11 is one byte short of the JSON: the reader must stop there.
  Write(Pieces(reply, 3));
  ReplyReader reader;
  int status = 0;
  std::string body = "left over from an earlier reply";
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "{\"Error\":\"\"");
}

TEST_F(ReplyReaderTest, ReadsHeaderNamesInAnyCase) {
  Write({"HTTP/1.1 404 Not Found\r\ncontent-LENGTH:   4\r\n\r\nnope"});
  ReplyReader reader;
  int status = 0;
  std::string body;
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(status, 404);
  EXPECT_EQ(body, "nope");
}

TEST_F(ReplyReaderTest, ReadsChunkedBodiesWithSizeLinesSplitAcrossReads) {
  const std::string reply =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1B\r\n, chunked world of 27 bytes\r\n0\r\n\r\n";
  Write(Pieces(reply, 4));
  ReplyReader reader;
  int status = 0;
  std::string body;
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "hello, chunked world of 27 bytes");
}

TEST_F(ReplyReaderTest, FailsOnAChunkLongerThanItsSizeLine) {
  Write({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nfour\r\n0\r\n\r\n"});
  ReplyReader reader;
  int status = 0;
  std::string body;
  EXPECT_FALSE(reader.Read(reader_fd(), status, body));
}

TEST_F(ReplyReaderTest, KeepsBytesPastOneReplyForTheNext) {
  Write({"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\noneHTTP/1.1 500 Internal Server Error\r\n"
         "Transfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
         "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthree"});
  ReplyReader reader;
  int status = 0;
  std::string body;
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "one");
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(status, 500);
  EXPECT_EQ(body, "two");
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "three");
}

TEST_F(ReplyReaderTest, ReadsLargeBodiesExactly) {
  std::string payload(6 << 20, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i * 7 % 26);
  Write({"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(payload.size()) + "\r\n\r\n" +
         payload.substr(0, 100),
         payload.substr(100)});
  ReplyReader reader;
  int status = 0;
  std::string body;
  ASSERT_TRUE(reader.Read(reader_fd(), status, body));
  EXPECT_EQ(body.size(), payload.size());
  EXPECT_TRUE(body == payload);
}

TEST_F(ReplyReaderTest, FailsWhenThePeerClosesInsideTheBody) {
  Write({"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"}, /*close_after=*/true);
  ReplyReader reader;
  int status = 0;
  std::string body;
  EXPECT_FALSE(reader.Read(reader_fd(), status, body));
}

TEST_F(ReplyReaderTest, RefusesRepliesWithoutFraming) {
  Write({"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close"}, true);
  ReplyReader reader;
  int status = 0;
  std::string body;
  EXPECT_FALSE(reader.Read(reader_fd(), status, body));
}

TEST(LoopbackConnectionTest, ExchangesOverLoopbackAndReconnectsAfterAClose) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  // Two connections, one request each; the server closes after each reply.
  std::thread server([listener] {
    for (int i = 0; i < 2; ++i) {
      const int fd = accept(listener, nullptr, nullptr);
      std::string got;
      char buf[256];
      while (got.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
      const std::string body = "reply " + std::to_string(i) + " to " + got.substr(0, got.find(' '));
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\n\r\n" + body);
      close(fd);
    }
  });
  LoopbackConnection conn(ntohs(addr.sin_port));
  int status = 0;
  std::string body;
  ASSERT_TRUE(conn.Exchange("GET / HTTP/1.1\r\n\r\n", status, body));
  EXPECT_EQ(body, "reply 0 to GET");
  // The server closed: this exchange fails, the next one reconnects.
  EXPECT_FALSE(conn.Exchange("POST / HTTP/1.1\r\n\r\n", status, body));
  ASSERT_TRUE(conn.Exchange("POST / HTTP/1.1\r\n\r\n", status, body));
  EXPECT_EQ(body, "reply 1 to POST");
  server.join();
  close(listener);
}

TEST(LoopbackConnectionTest, RefusesHostsOtherThanLoopback) {
  EXPECT_EQ(ConnectLoopback("10.0.0.1", 80), -1);
  EXPECT_EQ(ConnectLoopback("example.com", 80), -1);
  EXPECT_FALSE(IsLoopbackHost("127.0.0.2.example.com"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
}

TEST(CarriesErrorTest, FindsANonEmptyErrorAnywhere) {
  EXPECT_FALSE(CarriesError(R"({"NodeNames":["a"],"Error":""})"));
  EXPECT_TRUE(CarriesError(R"({"Error":"no such profile"})"));
  EXPECT_TRUE(CarriesError(R"({"Nodes":{"Error":""},"Error":"x"})"));
  EXPECT_FALSE(CarriesError(R"({"Error":)"));
  EXPECT_FALSE(CarriesError(""));
}

}  // namespace
}  // namespace schedext::bench
