// A ps-lite program: every node (the scheduler too) sends a SimpleApp
// request to every group and to every single node, and checks that each
// recipient answered exactly once with the expected body.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "ps/ps.h"

using namespace ps;

int main() {
  Start(0);
  std::mutex mu;
  std::multiset<int> answered_by;
  SimpleApp app(0, 0);
  app.set_request_handle([](const SimpleData& req, SimpleApp* a) {
    a->Response(req, "echo:" + std::to_string(req.head) + ":" + req.body);
  });
  app.set_response_handle([&](const SimpleData& res, SimpleApp*) {
    std::lock_guard<std::mutex> lock(mu);
    answered_by.insert(res.sender);
    CHECK_EQ(res.body,
             "echo:" + std::to_string(res.head) + ":hello from " + std::to_string(MyRank()));
  });
  // A request that arrives before set_request_handle gets the default
  // (empty) answer, as in ps-lite: nobody asks until everyone has its
  // handlers.
  Postoffice::Get()->Barrier(0, kScheduler + kServerGroup + kWorkerGroup);
  const int groups[] = {kScheduler,
                        kServerGroup,
                        kWorkerGroup,
                        kScheduler + kServerGroup,
                        kScheduler + kWorkerGroup,
                        kServerGroup + kWorkerGroup,
                        kScheduler + kServerGroup + kWorkerGroup};
  std::string body = "hello from " + std::to_string(MyRank());
  int head = 100;
  for (int g : groups) {
    {
      std::lock_guard<std::mutex> lock(mu);
      answered_by.clear();
    }
    app.Wait(app.Request(head++, body, g));
    std::lock_guard<std::mutex> lock(mu);
    std::multiset<int> want(Postoffice::Get()->GetNodeIDs(g).begin(),
                            Postoffice::Get()->GetNodeIDs(g).end());
    CHECK(answered_by == want) << "group " << g << ": " << answered_by.size() << " answers, "
                               << want.size() << " expected";
  }
  // Every single node by id.
  for (int id : Postoffice::Get()->GetNodeIDs(kScheduler + kServerGroup + kWorkerGroup)) {
    app.Wait(app.Request(head++, body, id));
  }
  // Everyone keeps answering until everyone is done asking.
  Postoffice::Get()->Barrier(0, kScheduler + kServerGroup + kWorkerGroup);
  std::printf("%s %d: SimpleApp requests to every group answered exactly once\n",
              IsScheduler() ? "scheduler"
              : IsServer()  ? "server"
                            : "worker",
              MyRank());
  Finalize(0, true);
  return 0;
}
