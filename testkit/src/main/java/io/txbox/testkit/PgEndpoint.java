package io.txbox.testkit;

/**
 * Where a PostgreSQL server is and how to log in.
 *
 * @param url base JDBC URL, without a schema
 * @param user login role
 * @param password password, empty for trust authentication
 * @param source where the address came from, for messages
 */
record PgEndpoint(String url, String user, String password, String source) {
  @Override
  public String toString() {
    // Never print the password.
    return url + " (user " + user + ", from " + source + ")";
  }
}
