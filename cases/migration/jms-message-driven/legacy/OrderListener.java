package com.acme.orders;

import javax.ejb.ActivationConfigProperty;
import javax.ejb.MessageDriven;
import javax.inject.Inject;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageListener;
import javax.jms.TextMessage;

@MessageDriven(activationConfig = {
        @ActivationConfigProperty(propertyName = "destination", propertyValue = "topic/orders")
})
public class OrderListener implements MessageListener {

    @Inject
    OrderService service;

    @Override
    public void onMessage(Message message) {
        try {
            String body = ((TextMessage) message).getText();
            service.openOrders(body);
        } catch (JMSException e) {
            throw new IllegalStateException(e);
        }
    }
}
