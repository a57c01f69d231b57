package com.acme.orders;

import java.util.List;

import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;

@Path("/orders")
public class OrderResource {

    @Inject
    OrderService service;

    @GET
    @Path("/{customer}")
    @Produces(MediaType.APPLICATION_JSON)
    public List<Order> open(@PathParam("customer") String customer) {
        return service.openOrders(customer);
    }
}
