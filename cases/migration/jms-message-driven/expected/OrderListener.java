package com.acme.orders;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.reactive.messaging.Incoming;

@ApplicationScoped
public class OrderListener {

    @Inject
    OrderService service;

    @Incoming("orders")
    public void onMessage(String body) {
        service.openOrders(body);
    }
}
