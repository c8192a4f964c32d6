#include "engine/pslite/ps_customers.h"

#include <string>

#include "engine/pslite/ps_convert.h"

namespace caravan::psl {

void Customers::add(ps::Customer* c) {
  std::lock_guard<std::mutex> lock(mu_);
  Key key{c->app_id(), c->customer_id()};
  if (customers_.count(key))
    throw ps_error("ps: customer (app " + std::to_string(key.first) + ", customer " +
                   std::to_string(key.second) + ") already exists on this node");
  customers_[key] = c;
  auto it = early_.find(key);
  if (it == early_.end()) return;
  for (auto& m : it->second) c->Accept(m);
  early_.erase(it);
  claimed_.notify_all();
}

void Customers::remove(ps::Customer* c) {
  std::lock_guard<std::mutex> lock(mu_);
  customers_.erase(Key{c->app_id(), c->customer_id()});
}

ps::Customer* Customers::find(int app_id, int customer_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = customers_.find(Key{app_id, customer_id});
  return it == customers_.end() ? nullptr : it->second;
}

bool Customers::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return customers_.empty();
}

void Customers::wake_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, c] : customers_) c->AddResponse(-1, 0);
}

bool Customers::deliver(const Key& key, ps::Message&& msg) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = customers_.find(key);
  if (it != customers_.end()) {
    it->second->Accept(msg);
    return false;
  }
  auto& waiting = early_[key];
  waiting.push_back(std::move(msg));
  return waiting.size() == 1;
}

bool Customers::claimed_within(const Key& key, std::chrono::seconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  return claimed_.wait_for(lock, wait, [&] { return early_.count(key) == 0; });
}

void Customers::register_buffer(int sender, uint64_t key, const ps::SArray<char>& buf) {
  std::lock_guard<std::mutex> lock(mu_);
  receive_into_[std::make_pair(sender, key)] = buf;
}

bool Customers::registered(int sender, uint64_t key, ps::SArray<char>* buf) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (receive_into_.empty()) return false;
  auto it = receive_into_.find(std::make_pair(sender, key));
  if (it == receive_into_.end()) return false;
  *buf = it->second;
  return true;
}

}  // namespace caravan::psl
