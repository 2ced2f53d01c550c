package io.txbox.testkit;

/** Run in a separate JVM by {@link KafkaBrokerSharedIT}: prints the shared broker's address. */
public final class SharedBrokerProbe {
  private SharedBrokerProbe() {}

  public static void main(String[] args) {
    System.out.println("bootstrap=" + KafkaBroker.shared().bootstrapServers());
  }
}
